from contreact_embedder.main import main

main()
