from contreact_assessor.main import main

main()
