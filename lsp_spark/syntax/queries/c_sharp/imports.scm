(using_directive) @import
