; Types in a file or namespace (block or file-scoped) or nested in a type, and their members.
([
  (compilation_unit (class_declaration name: (_) @name) @definition)
  (declaration_list (class_declaration name: (_) @name) @definition)
] (#set! kind "class"))
([
  (compilation_unit (struct_declaration name: (_) @name) @definition)
  (declaration_list (struct_declaration name: (_) @name) @definition)
] (#set! kind "struct"))
([
  (compilation_unit (interface_declaration name: (_) @name) @definition)
  (declaration_list (interface_declaration name: (_) @name) @definition)
] (#set! kind "interface"))
([
  (compilation_unit (record_declaration name: (_) @name) @definition)
  (declaration_list (record_declaration name: (_) @name) @definition)
] (#set! kind "record"))
([
  (compilation_unit (enum_declaration name: (_) @name) @definition)
  (declaration_list (enum_declaration name: (_) @name) @definition)
] (#set! kind "enum"))
([
  (compilation_unit (delegate_declaration name: (_) @name) @definition)
  (declaration_list (delegate_declaration name: (_) @name) @definition)
] (#set! kind "type"))
([
  (compilation_unit [(namespace_declaration name: (_) @name) (file_scoped_namespace_declaration name: (_) @name)] @definition)
  (declaration_list (namespace_declaration name: (_) @name) @definition)
] (#set! kind "namespace"))
(declaration_list (method_declaration name: (_) @name) @definition (#set! kind "method"))
(declaration_list (constructor_declaration name: (_) @name) @definition (#set! kind "constructor"))
(declaration_list (property_declaration name: (_) @name) @definition (#set! kind "property"))
(declaration_list (field_declaration (variable_declaration (variable_declarator name: (_) @name))) @definition (#set! kind "field"))
