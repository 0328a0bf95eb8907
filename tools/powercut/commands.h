// The `powercut` command line: main.cc is a dispatcher; each command group registers its
// subcommands here. A subcommand's callback stores the exit code in *exit_code.
#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "harness/fs/file_system.h"

namespace powercut::cli {

void AddTraceCommands(CLI::App& app, int* exit_code);  // trace show | replay | manifest
void AddStateCommands(CLI::App& app, int* exit_code);  // state materialize | list
void AddCheckCommands(CLI::App& app, int* exit_code);  // check
void AddDiffCommand(CLI::App& app, int* exit_code);    // diff (harness/diff/)

// --fs NAME into *fs through the file-system table (harness::ParseFsKind), so every command
// accepts the same names and rejects others with the same message, before anything runs.
CLI::Option* AddFsOption(CLI::App* app, harness::FsKind* fs, const std::string& help);
// --check-in guest|host of run, check, matrix and repro (product::ParseCheckIn; "" = the default).
CLI::Option* AddCheckInOption(CLI::App* app, std::string* check_in);

// Prints "powercut: <message>" to stderr and returns 1.
int Fail(const std::string& message);

}  // namespace powercut::cli
