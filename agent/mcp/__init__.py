"""chiplore over the Model Context Protocol: the tools (`toolbox`) and the server that serves them (`server`)."""
