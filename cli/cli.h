/* The syncsim command line: one program with subcommands. */
#ifndef SS_CLI_CLI_H
#define SS_CLI_CLI_H

int cli_main(int argc, char **argv);

#endif
