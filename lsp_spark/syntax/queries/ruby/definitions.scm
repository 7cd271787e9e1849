; Classes and modules anywhere (they nest to namespace), methods in them or at the top level,
; and constants assigned in them or at the top level.
((class name: (_) @name) @definition (#set! kind "class"))
((module name: (_) @name) @definition (#set! kind "module"))
([
  (program [(method name: (_) @name) (singleton_method name: (_) @name)] @definition)
  (body_statement [(method name: (_) @name) (singleton_method name: (_) @name)] @definition)
] (#set! kind "method"))
([
  (program (assignment left: (constant) @name) @definition)
  (body_statement (assignment left: (constant) @name) @definition)
] (#set! kind "constant"))
