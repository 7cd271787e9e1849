(import_declaration) @import
