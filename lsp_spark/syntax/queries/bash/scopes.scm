((function_definition body: (_) @scope.body) @scope (#set! kind "function"))
