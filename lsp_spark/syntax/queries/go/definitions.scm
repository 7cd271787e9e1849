(source_file (function_declaration name: (_) @name) @definition (#set! kind "function"))
(source_file (method_declaration name: (_) @name) @definition (#set! kind "method"))

; A lone `type`/`const` declaration is the definition; in a `( ... )` group each spec is.
; Struct and interface patterns come before the general type pattern, so they name the kind.
((type_declaration (type_spec name: (_) @name type: (struct_type))) @definition
  (#set! kind "struct")
  (#not-match? @definition "^type\\s*\\("))
((type_declaration (type_spec name: (_) @name type: (interface_type))) @definition
  (#set! kind "interface")
  (#not-match? @definition "^type\\s*\\("))
((type_declaration [(type_spec name: (_) @name) (type_alias name: (_) @name)]) @definition
  (#set! kind "type")
  (#not-match? @definition "^type\\s*\\("))
(type_declaration "(" (type_spec name: (_) @name type: (struct_type)) @definition (#set! kind "struct"))
(type_declaration "(" (type_spec name: (_) @name type: (interface_type)) @definition (#set! kind "interface"))
(type_declaration "(" [(type_spec name: (_) @name) (type_alias name: (_) @name)] @definition (#set! kind "type"))
((const_declaration (const_spec name: (_) @name)) @definition
  (#set! kind "constant")
  (#not-match? @definition "^const\\s*\\("))
(const_declaration "(" (const_spec name: (_) @name) @definition (#set! kind "constant"))
