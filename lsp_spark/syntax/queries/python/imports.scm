[
  (import_statement)
  (import_from_statement)
  (future_import_statement)
] @import
