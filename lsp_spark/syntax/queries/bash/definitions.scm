; Functions, and variables assigned at the top level (plain, export, readonly, declare).
((function_definition name: (_) @name) @definition (#set! kind "function"))
([
  (program (variable_assignment name: (_) @name) @definition)
  (program (declaration_command (variable_assignment name: (_) @name)) @definition)
] (#set! kind "variable"))
