// The `powercut` command line: main.cc is a dispatcher; each command group registers its
// subcommands here. A subcommand's callback stores the exit code in *exit_code.
#pragma once

#include "CLI/CLI.hpp"

namespace powercut::cli {

void AddTraceCommands(CLI::App& app, int* exit_code);  // trace show | replay | manifest
void AddStateCommands(CLI::App& app, int* exit_code);  // state materialize | list
void AddCheckCommands(CLI::App& app, int* exit_code);  // check

// Prints "powercut: <message>" to stderr and returns 1.
int Fail(const std::string& message);

}  // namespace powercut::cli
