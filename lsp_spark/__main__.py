from lsp_spark.cli import main

main()
