; Items at the top of a file or of an inline module, and the functions of impls and traits.
([
  (source_file (function_item name: (_) @name) @definition)
  (mod_item body: (declaration_list (function_item name: (_) @name) @definition))
] (#set! kind "function"))
([
  (source_file (struct_item name: (_) @name) @definition)
  (mod_item body: (declaration_list (struct_item name: (_) @name) @definition))
] (#set! kind "struct"))
([
  (source_file (enum_item name: (_) @name) @definition)
  (mod_item body: (declaration_list (enum_item name: (_) @name) @definition))
] (#set! kind "enum"))
([
  (source_file (union_item name: (_) @name) @definition)
  (mod_item body: (declaration_list (union_item name: (_) @name) @definition))
] (#set! kind "union"))
([
  (source_file (trait_item name: (_) @name) @definition)
  (mod_item body: (declaration_list (trait_item name: (_) @name) @definition))
] (#set! kind "trait"))
([
  (source_file (impl_item type: (_) @name) @definition)
  (mod_item body: (declaration_list (impl_item type: (_) @name) @definition))
] (#set! kind "impl"))
([
  (source_file (type_item name: (_) @name) @definition)
  (mod_item body: (declaration_list (type_item name: (_) @name) @definition))
] (#set! kind "type"))
([
  (source_file [(const_item name: (_) @name) (static_item name: (_) @name)] @definition)
  (mod_item body: (declaration_list [(const_item name: (_) @name) (static_item name: (_) @name)] @definition))
] (#set! kind "constant"))
([
  (source_file (mod_item name: (_) @name) @definition)
  (mod_item body: (declaration_list (mod_item name: (_) @name) @definition))
] (#set! kind "module"))
([
  (source_file (macro_definition name: (_) @name) @definition)
  (mod_item body: (declaration_list (macro_definition name: (_) @name) @definition))
] (#set! kind "macro"))
([
  (impl_item body: (declaration_list (function_item name: (_) @name) @definition))
  (trait_item body: (declaration_list [(function_item name: (_) @name) (function_signature_item name: (_) @name)] @definition))
] (#set! kind "method"))
([
  (impl_item body: (declaration_list [(const_item name: (_) @name) (type_item name: (_) @name)] @definition))
  (trait_item body: (declaration_list [(const_item name: (_) @name) (associated_type name: (_) @name)] @definition))
] (#set! kind "constant"))
