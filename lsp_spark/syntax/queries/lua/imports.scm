; local x = require("x"), and a bare require("x") statement.
((variable_declaration
  (assignment_statement
    (expression_list value: (function_call name: (identifier) @_require)))) @import
  (#eq? @_require "require"))
((chunk (function_call name: (identifier) @_require) @import)
  (#eq? @_require "require"))
