from contreact_memory.main import main

main()
