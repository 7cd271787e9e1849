; inherits: c
; These come before the inherited C patterns, so members are methods rather than functions.
(field_declaration_list
  [
    (function_definition declarator: (function_declarator declarator: (_) @name)) @definition
    (field_declaration declarator: (function_declarator declarator: (_) @name)) @definition
    (declaration declarator: (function_declarator declarator: (_) @name)) @definition
    (template_declaration (function_definition declarator: (function_declarator declarator: (_) @name)) @definition)
  ]
  (#set! kind "method"))
((function_definition
  declarator: [
    (reference_declarator (function_declarator declarator: (_) @name))
    (pointer_declarator declarator: (reference_declarator (function_declarator declarator: (_) @name)))
  ]) @definition
  (#set! kind "function"))
((class_specifier name: (_) @name body: (_)) @definition (#set! kind "class"))
((namespace_definition name: (_) @name) @definition (#set! kind "namespace"))
((alias_declaration name: (_) @name) @definition (#set! kind "type"))
