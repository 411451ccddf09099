// ingest-server: the DataIngest ingest server executable.
//
// The command line lives in IngestServer's `ServerCommand` (Service/): it
// runs the server from `--config FILE`, or with no config as the development
// server, and the `apikey create` subcommand. See Docs/Server.md.
#if canImport(Glibc)
import Glibc
#endif
import IngestServer

exit(ServerCommand.main(Array(CommandLine.arguments.dropFirst())))
