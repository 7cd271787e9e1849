; Functions declared at the top level (global, local or on a module table), and functions
; assigned to a top-level name or table field.
(chunk (function_declaration name: (_) @name) @definition (#set! kind "function"))
(chunk
  (variable_declaration
    (assignment_statement
      (variable_list . name: (_) @name .)
      (expression_list . value: (function_definition) .))) @definition
  (#set! kind "function"))
(chunk
  (assignment_statement
    (variable_list . name: (_) @name .)
    (expression_list . value: (function_definition) .)) @definition
  (#set! kind "function"))
