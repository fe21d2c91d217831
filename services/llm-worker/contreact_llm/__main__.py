from contreact_llm.main import main

main()
