; inherits: ecma
(class_body (field_definition property: (_) @name value: [(arrow_function) (function_expression)]) @definition (#set! kind "method"))
