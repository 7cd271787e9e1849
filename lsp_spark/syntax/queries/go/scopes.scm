((function_declaration body: (block) @scope.body) @scope (#set! kind "function"))
((method_declaration body: (block) @scope.body) @scope (#set! kind "method"))

; `type T struct {` opens a scope at the keyword; inside `type ( ... )` each spec is its own.
((type_declaration
  (type_spec type: (struct_type (field_declaration_list) @scope.body))) @scope
  (#set! kind "struct")
  (#not-match? @scope "^type\\s*\\("))
((type_declaration
  (type_spec type: (interface_type) @scope.body)) @scope
  (#set! kind "interface")
  (#not-match? @scope "^type\\s*\\("))
(type_declaration "("
  (type_spec type: (struct_type (field_declaration_list) @scope.body)) @scope
  (#set! kind "struct"))
(type_declaration "("
  (type_spec type: (interface_type) @scope.body) @scope
  (#set! kind "interface"))
