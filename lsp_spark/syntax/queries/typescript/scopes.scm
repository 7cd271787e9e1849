; inherits: ecma
((abstract_class_declaration body: (class_body) @scope.body) @scope (#set! kind "class"))
((interface_declaration body: (interface_body) @scope.body) @scope (#set! kind "interface"))
((enum_declaration body: (enum_body) @scope.body) @scope (#set! kind "enum"))
((internal_module body: (statement_block) @scope.body) @scope (#set! kind "namespace"))
((module body: (statement_block) @scope.body) @scope (#set! kind "module"))
((public_field_definition value: [(arrow_function body: (_) @scope.body) (function_expression body: (_) @scope.body)]) @scope (#set! kind "method"))
