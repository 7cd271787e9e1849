; Shared by JavaScript and TypeScript: only node types both grammars have.
((class_declaration body: (class_body) @scope.body) @scope (#set! kind "class"))
((class body: (class_body) @scope.body) @scope (#set! kind "class"))
((function_declaration body: (statement_block) @scope.body) @scope (#set! kind "function"))
((generator_function_declaration body: (statement_block) @scope.body) @scope (#set! kind "function"))
((method_definition body: (statement_block) @scope.body) @scope (#set! kind "method"))

; `const f = () => {}` and `let f = function () {}` with a single declarator: the declaration
; names the function, so its header starts at the keyword.
([
  (lexical_declaration
    . (variable_declarator
      value: [
        (arrow_function body: (_) @scope.body)
        (function_expression body: (_) @scope.body)
      ]) .)
  (variable_declaration
    . (variable_declarator
      value: [
        (arrow_function body: (_) @scope.body)
        (function_expression body: (_) @scope.body)
      ]) .)
] @scope (#set! kind "function"))
