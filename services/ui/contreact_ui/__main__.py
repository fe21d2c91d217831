from contreact_ui.main import main

main()
