; inherits: c
(using_declaration) @import
