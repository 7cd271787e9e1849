; inherits: c
((class_specifier body: (field_declaration_list) @scope.body) @scope (#set! kind "class"))
((namespace_definition body: (declaration_list) @scope.body) @scope (#set! kind "namespace"))

; A template shares its body with the class or function it declares; the template, which starts
; first, gives the header.
((template_declaration
  [
    (class_specifier body: (_) @scope.body)
    (struct_specifier body: (_) @scope.body)
    (function_definition body: (_) @scope.body)
  ]) @scope
  (#set! kind "template"))
