; Functions (definitions and prototypes), named struct/union/enum bodies, typedefs and macros.
; No parent is required: headers wrap everything in include guards, and C has no local functions.
((function_definition
  declarator: [
    (function_declarator declarator: (_) @name)
    (pointer_declarator declarator: (function_declarator declarator: (_) @name))
    (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name)))
  ]) @definition
  (#set! kind "function"))
((declaration
  declarator: [
    (function_declarator declarator: (identifier) @name)
    (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
    (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))
  ]) @definition
  (#set! kind "function"))
((struct_specifier name: (_) @name body: (_)) @definition (#set! kind "struct"))
((union_specifier name: (_) @name body: (_)) @definition (#set! kind "union"))
((enum_specifier name: (_) @name body: (_)) @definition (#set! kind "enum"))
((type_definition declarator: (type_identifier) @name) @definition (#set! kind "type"))
; Include guards (`#define X_H` with no value) are left out.
([(preproc_def name: (_) @name value: (_)) (preproc_function_def name: (_) @name)] @definition
  (#set! kind "macro"))
