; Types at the top of a file or nested in a type, and their methods, constructors and fields.
([
  (program (class_declaration name: (_) @name) @definition)
  (class_body (class_declaration name: (_) @name) @definition)
  (interface_body (class_declaration name: (_) @name) @definition)
  (enum_body_declarations (class_declaration name: (_) @name) @definition)
] (#set! kind "class"))
([
  (program [(interface_declaration name: (_) @name) (annotation_type_declaration name: (_) @name)] @definition)
  (class_body [(interface_declaration name: (_) @name) (annotation_type_declaration name: (_) @name)] @definition)
  (interface_body [(interface_declaration name: (_) @name) (annotation_type_declaration name: (_) @name)] @definition)
  (enum_body_declarations [(interface_declaration name: (_) @name) (annotation_type_declaration name: (_) @name)] @definition)
] (#set! kind "interface"))
([
  (program (enum_declaration name: (_) @name) @definition)
  (class_body (enum_declaration name: (_) @name) @definition)
  (interface_body (enum_declaration name: (_) @name) @definition)
  (enum_body_declarations (enum_declaration name: (_) @name) @definition)
] (#set! kind "enum"))
([
  (program (record_declaration name: (_) @name) @definition)
  (class_body (record_declaration name: (_) @name) @definition)
  (interface_body (record_declaration name: (_) @name) @definition)
  (enum_body_declarations (record_declaration name: (_) @name) @definition)
] (#set! kind "record"))
([
  (class_body (method_declaration name: (_) @name) @definition)
  (interface_body (method_declaration name: (_) @name) @definition)
  (enum_body (enum_body_declarations (method_declaration name: (_) @name) @definition))
] (#set! kind "method"))
([
  (class_body (constructor_declaration name: (_) @name) @definition)
  (enum_body (enum_body_declarations (constructor_declaration name: (_) @name) @definition))
] (#set! kind "constructor"))
([
  (class_body (field_declaration declarator: (variable_declarator name: (_) @name)) @definition)
  (interface_body (constant_declaration declarator: (variable_declarator name: (_) @name)) @definition)
] (#set! kind "field"))
