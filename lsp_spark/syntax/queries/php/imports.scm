(namespace_use_declaration) @import
(expression_statement
  [
    (include_expression)
    (include_once_expression)
    (require_expression)
    (require_once_expression)
  ]) @import
