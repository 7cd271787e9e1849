(import_statement) @import
(export_statement source: (_)) @import

; const x = require("x")
([
  (lexical_declaration
    (variable_declarator value: (call_expression function: (identifier) @_require)))
  (variable_declaration
    (variable_declarator value: (call_expression function: (identifier) @_require)))
] @import (#eq? @_require "require"))
