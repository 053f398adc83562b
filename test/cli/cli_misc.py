"""The command line itself (help, nearest options, config keys, GPU options on the CPU) and the rest (test_cli.py
runs it)."""
import json
import os
import re
import shlex
import signal
import subprocess
import sys

from cli_support import (
    DEFAULT_CONFIG, REVGRAPH, SOURCE_ROOT, write_bytes, rg, make_draw, save_npz, CliTestCase)


class CommandLine(CliTestCase):
    """Help for every command, the nearest real option for a mistyped one, config keys."""

    COMMANDS = {
        ("run",): ["--input", "--test-labels", "--output", "--state", "--scores", "--repeat", "--config", "--set",
                   "--backend", "--device", "--workspace-bytes", "--pdl", "--quiet", "batch_size 128"],
        ("data",): ["mnist", "embedded"],
        ("data", "mnist"): ["--idx-dir", "--seed", "--output", "--test-labels-output", "--quiet"],
        ("data", "embedded"): ["--output", "--test-labels-output", "--split-seed", "--quiet"],
        ("qualify",): ["--idx-dir", "--band", "--first-seed", "--draws", "--output", "--together", "--set",
                       "--backend", "depth 2"],
        ("validate",): ["--output", "--replays", "--backend", "--quiet"],
        ("backends",): ["--device", "--json"],
    }

    def test_help_for_each_command(self):
        for command, mentions in self.COMMANDS.items():
            for flag in ("--help", "-h"):
                with self.subTest(command=command, flag=flag):
                    p = rg(*command, flag)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertEqual(p.stderr, "")
                    self.assertIn("revgraph " + " ".join(command), p.stdout)
                    for m in mentions:
                        self.assertIn(m, p.stdout)
        # The overview names every command once; help after other options still wins.
        p = rg("--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        for c in ("run", "data", "qualify", "validate", "backends", "version"):
            self.assertIn("\n  " + c, p.stdout)
        self.assertEqual(rg("help", "data", "mnist").stdout, rg("data", "mnist", "--help").stdout)
        self.assertEqual(rg("help").stdout, rg("--help").stdout)
        p = rg("run", "--set", "depth=3", "--help")
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertIn("--repeat", p.stdout)
        # Help for what is not there is the mistake that naming it is (it printed the overview, exit 0).
        for args, said in ((("help", "nope"), "unknown command 'nope'"), (("nope", "--help"), "unknown command 'nope'"),
                           (("help", "sweep", "nope"), "sweep: unknown kind 'nope'"),
                           (("run", "nope", "--help"), "run: unexpected argument 'nope'")):
            p = rg(*args)
            self.assertEqual((p.returncode, p.stdout), (2, ""), args)
            self.assertEqual(p.stderr.splitlines(), [p.stderr.splitlines()[0]], args)
            self.assertIn(said, p.stderr)

    def test_help_lists_config_keys_only_where_they_are_taken(self):
        # The config keys' footer is for commands that take --set: a subcommand inherits its parent's
        # footer in CLI11 unless it sets its own (`sweep merge` showed sweep's).
        for command in self.all_commands():
            with self.subTest(command=command):
                text = rg(*command, "--help").stdout
                self.assertEqual("config keys (defaults are rev88)" in text, "--set" in text, text[-400:])

    def test_a_band_that_is_no_band_is_a_usage_error_everywhere(self):
        # The same mistake, the same exit: 2, as qualify's --band has always been.
        for args in (("band", "--band", "abc", "--total", "10", "--per-draw", "5"), ("qualify", "--idx-dir", self.tmp, "--band", "abc"),
                     ("export", "--band", "7"), ("export", "--band", "12.5")):
            with self.subTest(args=args):
                self.assert_clean_error(rg(*args), 2, ["band"])

    def test_band_counts_are_usage_errors_in_one_line(self):
        # A count that is no non-negative integer: exit 2, the option named (not CLI11's "Could not convert").
        for total in ("-1", "1.5", "x"):
            with self.subTest(total=total):
                self.assert_clean_error(rg("band", "--band", "12", "--total", total, "--per-draw", "5"), 2,
                                        ["--total", total])
        self.assert_clean_error(rg("band", "--band", "12", "--total", "10", "--per-draw", "0"), 2,
                                ["--per-draw", "1..", "got '0'"])
        self.assert_clean_error(rg("qualify", "--idx-dir", self.tmp, "--draws", "2.5"), 2, ["--draws needs an integer"])
        # --correct, the verdict: counts no draw can have, an empty item, both or neither of --total
        # and --correct.
        for extra, said in ((["--correct", "9000,,1"], ["--correct", "integer"]),
                            (["--correct", "9000,10001"], ["draw 2", "10001 correct of 10000"]),
                            (["--correct", "-5"], ["--correct"]),
                            (["--correct", "9000", "--total", "10000"], ["--total or --correct"]),
                            (["--correct", "", "--total", "10000"], ["--total or --correct"]),
                            (["--total", "5000"], ["less than one draw of 10000"]),
                            ([], ["--total or --correct"])):
            with self.subTest(extra=extra):
                self.assert_clean_error(rg("band", "--band", "12", "--per-draw", "10000", *extra), 2, said)

    def all_commands(self, command=()):
        """Every command and kind, from the help's own "Subcommands:" lists."""
        found = [command]
        text = rg(*command, "--help").stdout
        if "\nSubcommands:\n" in text:
            for line in text.split("\nSubcommands:\n", 1)[1].split("\n\n", 1)[0].splitlines():
                found += self.all_commands(command + (line.split()[0],))
        return found

    def test_help_reads_as_prose(self):
        # CLI11 writes "--pdl Excludes: --no-pdl" beside an option; the description says it in words.
        commands = self.all_commands()
        for c in (("run",), ("data", "mnist"), ("sweep", "merge"), ("verify",), ("version",)):
            self.assertIn(c, commands)
        for command in commands:
            with self.subTest(command=command):
                p = rg(*command, "--help")
                self.assertEqual((p.returncode, p.stderr), (0, ""))
                for raw in ("Excludes:", "Needs:"):
                    self.assertNotIn(raw, p.stdout)
                if "--no-pdl" in p.stdout:
                    self.assertIn("not with --no-pdl", p.stdout)
                    self.assertIn("not with --pdl", p.stdout)
        # The rule still holds where the help no longer prints it.
        self.assert_clean_error(rg("run", "--pdl", "--no-pdl", "--quiet"), 2, ["--no-pdl", "--pdl"])

    def test_closed_pipe_ends_quietly(self):
        # `revgraph backends | head -1`: the reader gone, the command ends as C tools do (SIGPIPE),
        # without a word; where SIGPIPE is ignored, one line and exit 1: a lost result is never exit 0.
        for args in (["backends"], ["backends", "--json"], ["--help"], ["run", "--set", "epochs=1", "--quiet"]):
            for ignored in (False, True):
                with self.subTest(args=args, sigpipe_ignored=ignored):
                    r, w = os.pipe()
                    os.close(r)
                    try:
                        p = subprocess.run([REVGRAPH] + args, stdout=w, stderr=subprocess.PIPE, text=True,
                                           timeout=120, restore_signals=not ignored)  # Python ignores SIGPIPE
                    finally:
                        os.close(w)
                    if not ignored:
                        self.assertEqual((p.returncode, p.stderr), (-signal.SIGPIPE, ""))
                    elif args != ["--help"]:
                        self.assertEqual(p.returncode, 1)
                        self.assertEqual(p.stderr, "revgraph: error: cannot write the result to standard output\n")

    def test_python_tools_end_quietly_on_a_closed_pipe(self):
        # The Python commands of ours that print pages (`tools/gpu-check --plan | head`): no
        # BrokenPipe traceback, status 141 as a shell reports for a command stopped by SIGPIPE.
        tools = os.path.join(SOURCE_ROOT, "tools")
        for args in ([os.path.join(tools, "gpu-check"), "--plan"], [os.path.join(tools, "gpu-check"), "--help"],
                     [os.path.join(tools, "frontier"), "--help"]):
            for unbuffered in (False, True):  # each print meets the closed pipe, or the last flush does
                with self.subTest(args=args[1:], tool=os.path.basename(args[0]), unbuffered=unbuffered):
                    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
                    env.update({"PYTHONUNBUFFERED": "1"} if unbuffered else {})
                    r, w = os.pipe()
                    os.close(r)
                    try:
                        p = subprocess.run(args, stdout=w, stderr=subprocess.PIPE, text=True, timeout=120, env=env)
                    finally:
                        os.close(w)
                    self.assertEqual(p.returncode, 141, p.stderr)
                    for noise in ("Traceback", "BrokenPipe", "Exception ignored"):
                        self.assertNotIn(noise, p.stderr)

    def test_mistyped_option_names_the_nearest(self):
        d = self.fresh_dir("typo")
        for args, typo, near in (
            (["run", "--outptu", os.path.join(d, "r.json")], "--outptu", "--output"),
            (["run", "--inptu=x.npz"], "--inptu", "--input"),
            (["run", "--repaet", "2"], "--repaet", "--repeat"),
            (["data", "mnist", "--idx-dri", d, "--seed", "1", "--output", os.path.join(d, "x.npz")], "--idx-dri",
             "--idx-dir"),
            (["data", "embedded", "--outptu", os.path.join(d, "x.npz")], "--outptu", "--output"),
            (["qualify", "--idx-dir", d, "--drasw", "2"], "--drasw", "--draws"),
            (["validate", "--replay", "3"], "--replay", "--replays"),
            (["backends", "--jsno"], "--jsno", "--json"),
        ):
            with self.subTest(args=args):
                line = self.assert_clean_error(rg(*args), 2, [typo, "did you mean %s?" % near])
                self.assertIn(args[0], line)
        self.assertEqual(os.listdir(d), [])
        # Nothing close: no guess, a pointer to the help.
        line = self.assert_clean_error(rg("run", "--frobnicate"), 2, ["--frobnicate", "revgraph run --help"])
        self.assertNotIn("did you mean", line)
        # A mistyped command or kind is named with the nearest too.
        self.assert_clean_error(rg("rn"), 2, ["'rn'", "did you mean run?"])
        self.assert_clean_error(rg("data", "mnsit"), 2, ["'mnsit'", "did you mean mnist?"])

    def test_unknown_config_key_lists_the_valid_ones(self):
        valid = "valid keys: depth, width, alpha, seed, epochs, learning_rate, batch_size, momentum, weight_decay"
        self.assert_clean_error(rg("run", "--set", "dropout=0.1", "--quiet"), 1, ["dropout", valid])
        line = self.assert_clean_error(rg("run", "--set", "batchsize=8", "--quiet"), 1,
                                       ["batchsize", "did you mean batch_size?", valid])
        config = os.path.join(self.tmp, "typo-config.json")
        write_bytes(config, b'{"learning-rate": 0.05}')
        self.assert_clean_error(rg("run", "--config", config, "--quiet"), 1,
                                [config, "learning-rate", "did you mean learning_rate?", valid])
        self.assertIn("--set", line)

    def test_config_key_given_as_an_option_points_at_set(self):
        # "--epochs 3": the newcomer's guess. Where the command takes --set, the one line says how.
        d = self.fresh_dir("key-as-option")
        for args, hint in (
            (["run", "--epochs", "3"], "--epochs is a config key: use --set epochs=3"),
            (["run", "--quiet", "--epochs=5", "--output", os.path.join(d, "r.json")], "use --set epochs=5"),
            (["run", "--batch-size", "8"], "--batch-size is a config key: use --set batch_size=8"),
            (["run", "--learning_rate"], "use --set learning_rate=VALUE"),
            (["run", "--momentum", "--quiet"], "use --set momentum=VALUE"),
            (["qualify", "--idx-dir", d, "--depth", "3"], "qualify: --depth is a config key: use --set depth=3"),
            (["sweep", "--width", "128", "--output", os.path.join(d, "s.jsonl")], "use --set width=128"),
        ):
            with self.subTest(args=args):
                line = self.assert_clean_error(rg(*args), 2, [hint])
                self.assertNotIn("unknown option", line)
        for key in DEFAULT_CONFIG:  # every key of the engine's list, under its own name
            self.assert_clean_error(rg("run", "--" + key, "1"), 2, ["use --set %s=1" % key])
        # A command without --set keeps the plain answer.
        self.assert_clean_error(rg("data", "embedded", "--epochs", "3", "--output", os.path.join(d, "x.npz")), 2,
                                ["unknown option --epochs"])
        self.assertEqual(os.listdir(d), [])

    def test_integer_keys_take_a_zero_fraction(self):
        draw = save_npz(os.path.join(self.tmp, "int-draw.npz"), make_draw(n=19, q=7, seed=77))
        runs = {}
        config = os.path.join(self.tmp, "float-config.json")
        write_bytes(config, b'{"batch_size": 8.0, "seed": 5.0}')
        for name, args in (("ints", ["--set", "depth=2", "--set", "epochs=1", "--set", "batch_size=8",
                                     "--set", "seed=5"]),
                           ("floats", ["--set", "depth=2.0", "--set", "epochs=1.", "--config", config])):
            p = rg("run", "--input", draw, "--quiet", *args)
            self.assertEqual(p.returncode, 0, p.stderr)
            runs[name] = json.loads(p.stdout)
        self.assertEqual(runs["floats"]["config"], runs["ints"]["config"])
        self.assertEqual(runs["floats"]["config"]["batch_size"], 8)
        self.assertIsInstance(runs["floats"]["config"]["depth"], int)
        self.assertEqual(runs["floats"]["state_vector_sha256"], runs["ints"]["state_vector_sha256"])
        self.assert_clean_error(rg("run", "--input", draw, "--set", "depth=2.5", "--quiet"), 1, ["depth", "2.5"])
        write_bytes(config, b'{"batch_size": 8.5}')
        self.assert_clean_error(rg("run", "--input", draw, "--config", config, "--quiet"), 1, ["batch_size"])


class Misc(CliTestCase):

    def test_readme_worked_example_is_what_runs(self):
        # README.md's worked example, command by command in a fresh folder, prints what README shows
        # ("…" stands for a time or a machine's name, which differ from machine to machine).
        with open(os.path.join(SOURCE_ROOT, "README.md"), encoding="utf-8") as f:
            block = f.read().split("\n## Worked example", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
        steps = []
        for line in block.replace("\\\n", "").splitlines():
            if line.startswith("$ "):
                steps.append((line[2:].replace("build/tools/revgraph ", shlex.quote(REVGRAPH) + " "), []))
            else:
                steps[-1][1].append(line)
        self.assertGreaterEqual(len(steps), 4)
        d = self.fresh_dir("readme-example")
        for command, shown in steps:
            with self.subTest(command=command):
                p = subprocess.run(command, shell=True, cwd=d, capture_output=True, text=True, timeout=240,
                                   env=dict(os.environ, PATH="/usr/bin:/bin"))  # Debian's python3 and its numpy
                self.assertEqual(p.returncode, 0, p.stderr)
                got = (p.stdout + p.stderr).splitlines()
                self.assertEqual(len(got), len(shown), got)
                for line, pattern in zip(got, shown):
                    self.assertRegex(line, "^" + re.escape(pattern).replace(re.escape("…"), ".*?") + "$")

    def test_version_and_help(self):
        p = rg("version")
        self.assertEqual(p.returncode, 0)
        self.assertTrue(p.stdout.startswith("revgraph "))
        p = rg("--help")
        self.assertEqual(p.returncode, 0)
        for c in ("run", "data", "qualify", "validate", "backends"):
            self.assertIn(c, p.stdout)

    def test_backends(self):
        p = rg("backends", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        report = json.loads(p.stdout)
        rows = {b["requested"]: b for b in report["backends"]}
        self.assertEqual(list(rows), ["auto", "cpu", "cpu-reference", "cuda", "cuda-fused"])
        for name in ("auto", "cpu", "cpu-reference"):
            self.assertIs(rows[name]["usable"], True, name)
        for b in rows.values():
            # usable rows say what they build and where; the others say why not, and nothing else
            self.assertEqual(set(b), {"requested", "gpu", "usable", "backend", "device", "needs"} if b["usable"]
                             else {"requested", "gpu", "usable", "reason", "needs"}, b)
        # `gpu` says which names run on a device (the ones --emulate takes), so no tool reads the spelling.
        self.assertEqual([n for n, b in rows.items() if b["gpu"]], ["cuda", "cuda-fused"])
        for name, b in rows.items():
            p = rg("run", "--backend", name, "--emulate", "--set", "epochs=1", "--quiet", "--output",
                   os.path.join(self.fresh_dir("emulate-" + name), "r.json"))
            self.assertEqual(p.returncode == 0, b["gpu"], (name, p.stderr))
        # The GPU backends auto may pick are the ones tools/gpu_check/verified.py finds for this tree
        # (the passing gpu-check report that speaks for this tree's GPU path), written at build time.
        sys.path.insert(0, os.path.join(SOURCE_ROOT, "tools"))
        from gpu_check import verified
        built = report["gpu_verified"]
        self.assertEqual(built, dict(verified.verified(SOURCE_ROOT, gpu_arch=built["gpu_arch"]), gpu_arch=built["gpu_arch"],
                                     index="bench/results/INDEX.md"))
        self.assertTrue(os.path.isfile(os.path.join(SOURCE_ROOT, built["index"])))
        text = rg("backends").stdout
        self.assertIn("every GPU run: bench/results/INDEX.md", text)
        # Plainly verified or unverified, as the verdict written into the build says.
        self.assertIn("the GPU path of this build is " + ("verified by " if built["backends"] else "unverified ("), text)
        self.assertNotIn("unverified (unverified", text)  # the verdict's own first word not said twice
        picks = next(line for line in rg("backends").stdout.splitlines() if line.startswith("auto picks "))
        self.assertTrue(picks.startswith(f"auto picks {rows['auto']['backend']} here; its rule: "), picks)
        if report["gpu_verified"]["backends"]:
            rule = ", then ".join(report["gpu_verified"]["backends"]) + " on a " + report["gpu_verified"]["device"]
            self.assertIn(f"its rule: {rule} (verified there by {report['gpu_verified']['report']}", picks)
        else:
            self.assertIn("its rule: cpu: no GPU backend has a passing gpu-check report current for this build", picks)
        # cuda-fused needs no cuBLASLt (it never loads it); the cuBLASLt path says it does.
        self.assertIn("no cuBLASLt", rows["cuda-fused"]["needs"])
        self.assertIn("and cuBLASLt", rows["cuda"]["needs"])
        if not os.path.exists("/dev/nvidiactl"):
            for name in ("cuda", "cuda-fused"):
                self.assertIs(rows[name]["usable"], False, name)
                self.assertIn(name, rows[name]["reason"])
        # What it says `auto` and `cpu` build is what a run with them records.
        out = self.fresh_dir("backends")
        for name in ("auto", "cpu"):
            r = os.path.join(out, name + ".json")
            q = rg("run", "--backend", name, "--set", "epochs=1", "--quiet", "--output", r)
            self.assertEqual(q.returncode, 0, q.stderr)
            with open(r) as f:
                meta = json.load(f)
            self.assertEqual((meta["backend"], meta["device"]), (rows[name]["backend"], rows[name]["device"]), name)
        # The plain form: one line per name, the same verdicts, then what auto picks (checked above).
        p = rg("backends")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        # After the rows: what auto picks, whether the GPU path is verified, where the runs are.
        self.assertTrue(lines.pop().startswith("every GPU run: bench/results/INDEX.md"))
        self.assertTrue(lines.pop().startswith("the GPU path of this build is "))
        self.assertTrue(lines.pop().startswith("auto picks "))
        self.assertEqual([ln.split()[0] for ln in lines], list(rows))
        for ln in lines:
            self.assertEqual(ln.split()[1], "yes" if rows[ln.split()[0]]["usable"] else "no", ln)
            self.assertTrue(ln.endswith("[needs " + rows[ln.split()[0]]["needs"] + "]"), ln)
        self.assert_clean_error(rg("backends", "extra"), 2, ["extra"])
        self.assert_clean_error(rg("backends", "--pdl"), 2, ["--pdl"])  # a task option, not this command's

    def test_gpu_option_ranges_are_the_engines(self):
        # RuntimeOptions' ranges (0..1023, 0..2**32), the same numbers Python's configure_gpu takes.
        for option, value, rng in (("--device", "1024", "0..1023"), ("--device", "-1", "0..1023"),
                                   ("--workspace-bytes", "4294967297", "0..4294967296"),
                                   ("--workspace-bytes", "99999999999999999999999", "0..4294967296")):
            with self.subTest(option=option, value=value):
                err = self.assert_clean_error(rg("backends", option, value) if option == "--device" else
                                              rg("run", "--backend", "cuda", option, value, "--quiet"), 2, [option])
                self.assertEqual(err, f"revgraph: error: option {option} must be in {rng}, got {value}")
        err = self.assert_clean_error(rg("backends", "--device", "x"), 2, ["device"])
        self.assertEqual(err, "revgraph: error: option --device needs an integer, got 'x'")
        # The edges themselves are accepted (no such device here: the row says so, exit 0).
        self.assertEqual(rg("backends", "--device", "1023").returncode, 0)

    def test_backend_names_come_from_one_table(self):
        # `revgraph backends --json` lists the engine's backend table; every help text and the
        # unknown-name error must name exactly those rows, in the same order.
        p = rg("backends", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [b["requested"] for b in json.loads(p.stdout)["backends"]]

        def names_in(text):  # "a, b, c or d" -> [a, b, c, d]
            head, _, last = text.rpartition(" or ")
            return head.split(", ") + [last]

        for command in ("run", "sweep", "validate", "qualify"):
            with self.subTest(command=command):
                q = rg(command, "--help")
                self.assertEqual(q.returncode, 0, q.stderr)
                line = next(ln for ln in q.stdout.splitlines() if ln.strip().startswith("--backend"))
                listed = line.split(None, 2)[2].split(" (", 1)[0]
                self.assertEqual(names_in(listed), rows, line)
        err = self.assert_clean_error(rg("run", "--backend", "bogus", "--quiet"), 1, ["bogus"])
        self.assertEqual(names_in(err.split("(expected ", 1)[1].rstrip(")")), rows, err)
        # A backend that runs reports the name it was asked by (auto, an alias, reports its pick).
        for b in json.loads(p.stdout)["backends"]:
            if b["usable"] and b["requested"] != "auto":
                self.assertEqual(b["backend"], b["requested"], b)

    def test_gpu_options_refused_on_cpu_backends(self):
        # --device, --workspace-bytes, --pdl, --no-pdl and --cluster-blocks steer the CUDA backends
        # only: on a CPU one they are a usage error, before any work and output, not silently ignored.
        out = self.fresh_dir("pdl")
        r = os.path.join(out, "r.json")
        for backend in ("cpu", "cpu-reference"):
            for extra in (["--pdl"], ["--no-pdl"], ["--device", "0"], ["--cluster-blocks", "8"],
                          ["--workspace-bytes", "1048576"]):
                with self.subTest(backend=backend, option=extra[0]):
                    p = rg("run", "--backend", backend, "--set", "epochs=1", "--quiet", "--output", r, *extra)
                    self.assert_clean_error(p, 2, [extra[0], "cuda", backend])
                    self.assertEqual(os.listdir(out), [])
        if not os.path.exists("/dev/nvidiactl"):  # auto picks a CPU backend here
            p = rg("run", "--device", "0", "--set", "epochs=1", "--quiet", "--output", r)
            self.assert_clean_error(p, 2, ["--device", "auto", "cpu"])
            self.assertEqual(os.listdir(out), [])
        self.assert_clean_error(rg("backends", "--device", "x"), 2, ["device"])
        # On and off at once is a usage error, whatever the backend.
        self.assert_clean_error(rg("run", "--pdl", "--no-pdl", "--set", "epochs=1", "--output", r), 2,
                                ["--pdl", "--no-pdl"])
        self.assertEqual(os.listdir(out), [])
        # --cluster-blocks: a count in 0..16 (a usage error past it), for cuda-fused at width 82 (the
        # plan refuses another path or width in one line, emulated or not).
        self.assert_clean_error(rg("run", "--backend", "cuda-fused", "--emulate", "--cluster-blocks", "17",
                                   "--output", r), 2, ["--cluster-blocks", "0..16", "17"])
        for backend, sets in (("cuda", []), ("cuda-fused", ["--set", "width=90"])):
            with self.subTest(backend=backend, sets=sets):
                p = rg("run", "--backend", backend, "--emulate", "--cluster-blocks", "4", "--set", "epochs=1",
                       *sets, "--quiet", "--output", r)
                self.assert_clean_error(p, 1, ["cluster", "cuda-fused", "width-82"])
        self.assertEqual(os.listdir(out), [])
        # Without them, the CPU backend runs.
        p = rg("run", "--backend", "cpu", "--set", "epochs=1", "--quiet", "--output", r)
        self.assertEqual(p.returncode, 0, p.stderr)
