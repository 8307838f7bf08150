from fortemi.cli import main

raise SystemExit(main())
