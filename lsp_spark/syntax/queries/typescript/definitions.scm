; inherits: ecma
([
  (program (abstract_class_declaration name: (_) @name) @definition)
  (export_statement declaration: (abstract_class_declaration name: (_) @name) @definition)
] (#set! kind "class"))
([
  (program (interface_declaration name: (_) @name) @definition)
  (export_statement declaration: (interface_declaration name: (_) @name) @definition)
] (#set! kind "interface"))
([
  (program (type_alias_declaration name: (_) @name) @definition)
  (export_statement declaration: (type_alias_declaration name: (_) @name) @definition)
] (#set! kind "type"))
([
  (program (enum_declaration name: (_) @name) @definition)
  (export_statement declaration: (enum_declaration name: (_) @name) @definition)
] (#set! kind "enum"))
([
  (program (function_signature name: (_) @name) @definition)
  (export_statement declaration: (function_signature name: (_) @name) @definition)
] (#set! kind "function"))
([
  (expression_statement (internal_module name: (_) @name) @definition)
  (export_statement declaration: (internal_module name: (_) @name) @definition)
  (ambient_declaration (module name: (_) @name) @definition)
] (#set! kind "namespace"))
(class_body (abstract_method_signature name: (_) @name) @definition (#set! kind "method"))
(class_body (public_field_definition name: (_) @name value: [(arrow_function) (function_expression)]) @definition (#set! kind "method"))
(interface_body (method_signature name: (_) @name) @definition (#set! kind "method"))
