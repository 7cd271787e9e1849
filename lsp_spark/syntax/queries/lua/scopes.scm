; A body is absent while a function is still empty, so it is optional (the header is then
; the first line).
((function_declaration body: (block)? @scope.body) @scope (#set! kind "function"))

; `local f = function () end` and `M.f = function () end`: the statement names the function.
((variable_declaration
  (assignment_statement
    (expression_list . value: (function_definition body: (block)? @scope.body) .))) @scope
  (#set! kind "function"))
((assignment_statement
  (expression_list . value: (function_definition body: (block)? @scope.body) .)) @scope
  (#set! kind "function"))
