((function_definition body: (compound_statement) @scope.body) @scope (#set! kind "function"))
((struct_specifier body: (field_declaration_list) @scope.body) @scope (#set! kind "struct"))
((union_specifier body: (field_declaration_list) @scope.body) @scope (#set! kind "union"))
((enum_specifier body: (enumerator_list) @scope.body) @scope (#set! kind "enum"))
