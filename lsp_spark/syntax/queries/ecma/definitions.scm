; Top level (plain or exported): functions, classes and constants; class members: methods.
([
  (program [(function_declaration name: (_) @name) (generator_function_declaration name: (_) @name)] @definition)
  (export_statement declaration: [(function_declaration name: (_) @name) (generator_function_declaration name: (_) @name)] @definition)
] (#set! kind "function"))
([
  (program (class_declaration name: (_) @name) @definition)
  (export_statement declaration: (class_declaration name: (_) @name) @definition)
] (#set! kind "class"))
(class_body (method_definition name: (_) @name) @definition (#set! kind "method"))

; A const bound to a function is a function; the more general constant pattern comes after.
([
  (program (lexical_declaration . (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) .) @definition)
  (export_statement declaration: (lexical_declaration . (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) .) @definition)
] (#set! kind "function"))
([
  (program (lexical_declaration "const" (variable_declarator name: (identifier) @name value: (_) @_value)) @definition)
  (export_statement declaration: (lexical_declaration "const" (variable_declarator name: (identifier) @name value: (_) @_value)) @definition)
]
  (#set! kind "constant")
  (#not-match? @_value "^require\\s*\\("))
