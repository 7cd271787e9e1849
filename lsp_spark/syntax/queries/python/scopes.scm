((function_definition body: (block) @scope.body) @scope (#set! kind "function"))
((class_definition body: (block) @scope.body) @scope (#set! kind "class"))
