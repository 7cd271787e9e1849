((call
  !receiver
  method: (identifier) @_method) @import
  (#any-of? @_method "require" "require_relative" "load" "autoload"))
