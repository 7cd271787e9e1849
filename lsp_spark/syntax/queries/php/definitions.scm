; Declarations at the top level or in a braced namespace, and the members of classes and the like.
([
  (program (function_definition name: (_) @name) @definition)
  (namespace_definition body: (compound_statement (function_definition name: (_) @name) @definition))
] (#set! kind "function"))
([
  (program (class_declaration name: (_) @name) @definition)
  (namespace_definition body: (compound_statement (class_declaration name: (_) @name) @definition))
] (#set! kind "class"))
([
  (program (interface_declaration name: (_) @name) @definition)
  (namespace_definition body: (compound_statement (interface_declaration name: (_) @name) @definition))
] (#set! kind "interface"))
([
  (program (trait_declaration name: (_) @name) @definition)
  (namespace_definition body: (compound_statement (trait_declaration name: (_) @name) @definition))
] (#set! kind "trait"))
([
  (program (enum_declaration name: (_) @name) @definition)
  (namespace_definition body: (compound_statement (enum_declaration name: (_) @name) @definition))
] (#set! kind "enum"))
([
  (program (const_declaration (const_element (name) @name)) @definition)
  (namespace_definition body: (compound_statement (const_declaration (const_element (name) @name)) @definition))
  (declaration_list (const_declaration (const_element (name) @name)) @definition)
] (#set! kind "constant"))
(declaration_list (method_declaration name: (_) @name) @definition (#set! kind "method"))
(declaration_list (property_declaration (property_element name: (_) @name)) @definition (#set! kind "property"))
