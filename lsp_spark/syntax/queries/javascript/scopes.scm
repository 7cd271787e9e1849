; inherits: ecma
((field_definition value: [(arrow_function body: (_) @scope.body) (function_expression body: (_) @scope.body)]) @scope (#set! kind "method"))
