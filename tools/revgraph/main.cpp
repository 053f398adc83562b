// revgraph: the command line over the engine. Parsing (CLI11) and files here; everything else in
// engine/. Each subcommand registers its own options (tools/revgraph/*.cpp), so `--help` of each
// is generated from the options it really takes: the usage text exists once.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/closest_name.hpp"
#include "engine/config.hpp"
#include "engine/error.hpp"
#include "engine/version.hpp"
#include "engine/words.hpp"
#include "tools/revgraph/commands.hpp"
#include "tools/revgraph/common.hpp"

namespace {

using revgraph::cli::UsageError;

// Error messages carry file names, which may hold line breaks; the error stays one line.
std::string one_line(std::string message) {
    for (char& c : message)
        if (c == '\n' || c == '\r') c = ' ';
    return message;
}

std::string self_path(const char* argv0) {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) return std::string(buf, static_cast<std::size_t>(n));
    return argv0;
}

// The deepest subcommand the parse reached: the one whose options and leftovers matter.
CLI::App* selected(CLI::App* app) {
    for (CLI::App* sub : app->get_subcommands())
        if (sub->parsed()) return selected(sub);
    return app;
}

// "data mnist" for the leaf, "" for the top level.
std::string path_of(const CLI::App* app) {
    std::string path;
    for (const CLI::App* a = app; a->get_parent() != nullptr; a = a->get_parent())
        path = a->get_name() + (path.empty() ? "" : " " + path);
    return path;
}

std::vector<std::string> option_names(const CLI::App* app) {
    std::vector<std::string> names;
    for (const CLI::Option* o : app->get_options()) {
        for (const auto& l : o->get_lnames()) names.push_back("--" + l);
        for (const auto& s : o->get_snames()) names.push_back("-" + s);
    }
    return names;
}

std::vector<std::string> subcommand_names(const CLI::App* app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; }))
        names.push_back(sub->get_name());
    return names;
}

// The config key an unknown long option spells ("--epochs", "--batch-size": epochs, batch_size)
// where `app` takes --set, else "". The keys are the engine's (TaskConfig::keys()).
std::string config_key_named(const std::string& option, const CLI::App* app) {
    if (option.rfind("--", 0) != 0 || app->get_option_no_throw("--set") == nullptr) return "";
    std::string key = option.substr(2);
    std::replace(key.begin(), key.end(), '-', '_');
    const auto& keys = revgraph::TaskConfig::keys();
    return std::find(keys.begin(), keys.end(), key) != keys.end() ? key : "";
}

// What was left over at `app` (each subcommand allows extras so that they land here): an unknown
// option, named with the nearest real one, or an unexpected word. Nothing when nothing was left.
void refuse_leftovers(CLI::App* app) {
    const std::vector<std::string> rest = app->remaining();
    if (rest.empty()) return;
    const std::string word = rest.front();
    const std::string where = path_of(app);
    const std::string prefix = where.empty() ? "" : where + ": ";
    const std::string help = "revgraph " + (where.empty() ? "" : where + " ") + "--help";
    if (word.size() > 1 && word[0] == '-') {
        const std::string name = word.substr(0, word.find('='));
        // "--epochs 3" where the command takes --set: the config key the newcomer meant.
        if (const std::string key = config_key_named(name, app); !key.empty()) {
            std::string value = word.find('=') != std::string::npos ? word.substr(word.find('=') + 1) : "";
            if (value.empty() && rest.size() > 1 && rest[1].rfind("--", 0) != 0) value = rest[1];
            throw UsageError{prefix + name + " is a config key: use --set " + key + "=" +
                             (value.empty() ? "VALUE" : value)};
        }
        // Guess only for long names: one letter after a dash is too little to go on.
        const std::string near = name.rfind("--", 0) == 0 ? revgraph::closest_name(name, option_names(app)) : "";
        throw UsageError{prefix + "unknown option " + name +
                         (near.empty() ? " (see " + help + ")" : " (did you mean " + near + "?)")};
    }
    const auto subs = subcommand_names(app);
    if (!subs.empty()) {
        const std::string near = revgraph::closest_name(word, subs);
        throw UsageError{prefix + "unknown " + (where.empty() ? "command" : "kind") + " '" + word + "' (" +
                         (near.empty() ? "" : "did you mean " + near + "? ") + "expected " + revgraph::one_of(subs) +
                         ")"};
    }
    throw UsageError{prefix + "unexpected argument '" + word + "' (see " + help + ")"};
}

// Long options that take a value, in every command (a name means the same wherever it appears).
void value_options(const CLI::App* app, std::vector<std::string>& names) {
    for (const CLI::Option* o : app->get_options())
        if (o->get_items_expected_min() > 0)
            for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) value_options(sub, names);
}

// CLI11 takes the next word as an option's value whatever it is; "--input --quiet" is a forgotten
// value, not a file named "--quiet". A value that really starts with "--" is written --input=--x.
void refuse_options_as_values(const CLI::App& app, int argc, char** argv) {
    std::vector<std::string> names;
    value_options(&app, names);
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i], next = i + 1 < argc ? argv[i + 1] : "";
        // CLI11 reads "--repeat=" as "--repeat" and takes the next word: say what it is instead.
        if (a.size() > 3 && a.back() == '=' &&
            std::find(names.begin(), names.end(), a.substr(0, a.size() - 1)) != names.end())
            throw UsageError{"option " + a.substr(0, a.size() - 1) + " needs a value, got an empty one"};
        if (next.rfind("--", 0) == 0 && std::find(names.begin(), names.end(), a) != names.end())
            throw UsageError{"option " + a + " needs a value (got the option " + next.substr(0, next.find('=')) + ")"};
        if (a == "--") break;
    }
}

// CLI11's message, in the words of the rest of revgraph and prefixed by the subcommand.
std::string usage_message(const CLI::ParseError& e, const CLI::App* at) {
    std::string m = e.what();
    const std::string where = path_of(at);
    // "--input: 1 required TEXT missing": an option given last, or before another option, without its value.
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && m.find(" missing") != std::string::npos) {
        const std::string name = m.substr(0, m.find(':'));
        m = "option " + name + " needs a value";
    } else if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && m.find("flag override") != std::string::npos) {
        const std::string name = m.substr(0, m.find(' '));
        m = "option " + (name.rfind("-", 0) == 0 ? name : "--" + name) + " takes no value";
    }
    return (where.empty() ? "" : where + ": ") + m;
}

// CLI11 writes an option's Needs and Excludes lists raw beside its name ("--pdl Excludes: --no-pdl");
// the descriptions say it in words ("not with --no-pdl"), so the help leaves those lists out. They
// come last in CLI11's text for the option, after its type name and default.
class ProseFormatter : public CLI::Formatter {
public:
    std::string make_option_opts(const CLI::Option* opt) const override {
        std::string text = CLI::Formatter::make_option_opts(opt);
        for (const char* list : {"Needs", "Excludes"})
            if (const auto at = text.find(" " + get_label(list) + ":"); at != std::string::npos) text.erase(at);
        return text;
    }
};

}  // namespace

int main(int argc, char** argv) {
    using namespace revgraph;
    CLI::App app("revgraph " + std::string(version()) +
                     ": trains the reversible 9x9 MNIST-medium MLP from its seed and predicts query images",
                 "revgraph");
    app.allow_extras();
    app.formatter(std::make_shared<ProseFormatter>());  // every subcommand shares it (added below)
    app.get_formatter()->label("Usage", "usage");       // lower case, as every usage line of ours is
    app.get_formatter()->column_width(34);
    app.set_help_flag("-h,--help", "print this help (each command has its own: revgraph COMMAND --help)");
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->disable_flag_override();
    app.footer("Exit status: 0 done, 1 bad input or failure, 2 usage error, 3 qualify below the band.");
    bool show_version = false;
    app.add_flag("--version", show_version, "print the version and commit");

    std::vector<cli::Command> commands;
    commands.push_back(cli::add_run_command(app));
    for (auto& c : cli::add_data_commands(app)) commands.push_back(std::move(c));
    commands.push_back(cli::add_qualify_command(app));
    commands.push_back(cli::add_verify_command(app));
    commands.push_back(cli::add_validate_command(app, self_path(argv[0])));
    commands.push_back(cli::add_backends_command(app));
    commands.push_back(cli::add_export_command(app));
    commands.push_back(cli::add_band_command(app));
    for (auto& c : cli::add_sweep_commands(app)) commands.push_back(std::move(c));
    CLI::App* version_command = app.add_subcommand("version", "print the version and commit");
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
        sub->allow_extras();
        sub->set_help_flag("-h,--help", "print this help");
        for (CLI::App* leaf : sub->get_subcommands([](CLI::App*) { return true; })) {
            leaf->allow_extras();
            leaf->set_help_flag("-h,--help", "print this help");
        }
    }

    // `revgraph help [COMMAND...]` is `revgraph [COMMAND...] --help`.
    std::vector<char*> args(argv, argv + argc);
    std::string help_flag = "--help";
    if (args.size() > 1 && std::string(args[1]) == "help") {
        args.erase(args.begin() + 1);
        args.push_back(help_flag.data());
    }
    const int n = static_cast<int>(args.size());

    try {
        try {
            refuse_options_as_values(app, n, args.data());
            app.parse(n, args.data());
        } catch (const CLI::CallForHelp&) {
            // Help for a command that is not there is the mistake `revgraph nope` is, not the overview.
            refuse_leftovers(selected(&app));
            std::cout << app.help();
            return 0;
        } catch (const CLI::CallForAllHelp&) {
            std::cout << app.help("", CLI::AppFormatMode::All);
            return 0;
        } catch (const CLI::ParseError& e) {
            CLI::App* at = selected(&app);
            refuse_leftovers(at);  // an unknown option explains a missing value or required option better
            throw UsageError{usage_message(e, at)};
        }
        CLI::App* at = selected(&app);
        refuse_leftovers(at);
        if (app.get_subcommands().size() > 1) throw UsageError{"one command at a time (see revgraph --help)"};
        if (show_version || version_command->parsed()) {
            std::cout << "revgraph " << version() << " (" << git_commit() << ")\n";
            return 0;
        }
        for (const auto& c : commands)
            if (c.app->parsed()) return c.run();
        if (at == &app) {
            std::cout << app.help();  // no command: the overview, and a usage error's status
            return 2;
        }
        const auto kinds = subcommand_names(at);
        throw UsageError{path_of(at) + ": expected " + revgraph::one_of(kinds) + " (see revgraph " + path_of(at) +
                         " --help)"};
    } catch (const UsageError& e) {
        std::cerr << "revgraph: error: " << one_line(e.message) << "\n";
        return 2;
    } catch (const Error& e) {
        std::cerr << "revgraph: error: " << one_line(e.what()) << "\n";
        return 1;
    } catch (const std::bad_alloc&) {
        std::cerr << "revgraph: error: out of memory\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "revgraph: error: " << one_line(e.what()) << "\n";
        return 1;
    } catch (...) {
        std::cerr << "revgraph: error: internal error (unknown exception)\n";
        return 1;
    }
}
