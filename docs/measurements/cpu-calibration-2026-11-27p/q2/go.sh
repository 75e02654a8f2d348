# q1/go.sh with 5 traced runs, then the model's own timeline by both binaries from the same profile
sh "$(dirname "$0")/../q1/go.sh" 5
/tmp/tp2pp2-base/after/partbench model --dry-run --config test/tp2pp2-tiny --calibration cal.toml --trace fix.json > /dev/null 2>&1
/tmp/tp2pp2-base/before/partbench model --dry-run --config test/tp2pp2-tiny --calibration cal.toml --trace main.json > /dev/null 2>&1
