from contreact_cli.main import main

main()
