; `source file` and `. file`
((command name: (command_name) @_command) @import
  (#any-of? @_command "source" "."))
