; Module level: functions, classes, type aliases and UPPER_CASE constants.
(module
  [
    (function_definition name: (identifier) @name) @definition
    (decorated_definition definition: (function_definition name: (identifier) @name) @definition)
  ]
  (#set! kind "function"))
(module
  [
    (class_definition name: (identifier) @name) @definition
    (decorated_definition definition: (class_definition name: (identifier) @name) @definition)
  ]
  (#set! kind "class"))
(module (type_alias_statement left: (type (identifier) @name)) @definition (#set! kind "type"))
((module
  (expression_statement (assignment left: (identifier) @name)) @definition)
  (#set! kind "constant")
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))

; Class members: methods, nested classes and UPPER_CASE class constants.
(class_definition
  body: (block
    [
      (function_definition name: (identifier) @name) @definition
      (decorated_definition definition: (function_definition name: (identifier) @name) @definition)
    ])
  (#set! kind "method"))
(class_definition
  body: (block
    [
      (class_definition name: (identifier) @name) @definition
      (decorated_definition definition: (class_definition name: (identifier) @name) @definition)
    ])
  (#set! kind "class"))
((class_definition
  body: (block (expression_statement (assignment left: (identifier) @name)) @definition))
  (#set! kind "constant")
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))
