from contreact_orchestrator.main import main

main()
