; A body is absent while a definition is still empty (`def foo` … `end`): the cursor can
; already be inside, so the body is optional and the header is then the first line.
((class body: (_)? @scope.body) @scope (#set! kind "class"))
((module body: (_)? @scope.body) @scope (#set! kind "module"))
((singleton_class body: (_)? @scope.body) @scope (#set! kind "class"))
((method body: (_)? @scope.body) @scope (#set! kind "method"))
((singleton_method body: (_)? @scope.body) @scope (#set! kind "method"))
