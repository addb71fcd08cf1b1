#!/usr/bin/env bash
# Writes tests/golden/<NAME>/ for every case of tests/cases/bundler.txt by running
# clang-offload-bundler-19 (override with BUNDLER=...). Run from anywhere, after
# samples/make.sh whenever the samples change.
#
# For each case, in a fresh empty folder {O} that is also the working directory:
#   exit      the exit status, as text
#   stdout    standard output, as is
#   stderr    standard error with the program path (and, at the start of a line, its file
#             name) replaced by PROG, the samples folder by
#             {S}, the output folder by {O}, and temporary file names made constant
#   out/      every file the tool left in {O} (absent when there are none)
# [compressed] cases keep no out/. [llvm-crashes], [llvm-wrong] and [llvm-rejects] cases are not run: their folder holds only
# expected-stderr-contains, the `# expect:` texts of the case line, one a line (written for any
# case that has them). The syntax of the case file is described at its top.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cases="$root/tests/cases/bundler.txt"
S="$root/samples"
BUNDLER=${BUNDLER:-clang-offload-bundler-19}
TIMEOUT=${TIMEOUT:-60}

command -v "$BUNDLER" >/dev/null || { echo "golden/make.sh: $BUNDLER not found" >&2; exit 1; }
# Run it by its real path: LLVM 19 looks for llvm-objcopy beside argv[0] first when argv[0]
# names an existing file, and /usr/bin/llvm-objcopy may belong to another LLVM version.
bundler_path=$(readlink -f "$(command -v "$BUNDLER")")
[[ -d $S/bundles ]] || { echo "golden/make.sh: run samples/make.sh first" >&2; exit 1; }

# Remove the old golden folders (everything but this script and the README).
find "$here" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

declare -A seen=()
count=0 crashes=0 problems=0
lineno=0
while IFS= read -r line || [[ -n $line ]]; do
  lineno=$((lineno + 1))
  [[ $line =~ ^[[:space:]]*(#|$) ]] && continue

  # Trailing ` # expect: TEXT` parts.
  expects=()
  main=$line
  if [[ $line == *" # expect: "* ]]; then
    main=${line%%" # expect: "*}
    tail=${line#*" # expect: "}
    while [[ $tail == *" # expect: "* ]]; do
      expects+=("${tail%%" # expect: "*}")
      tail=${tail#*" # expect: "}
    done
    expects+=("$tail")
  fi

  if ! [[ $main =~ ^([A-Za-z0-9._-]+)((\ *\[[^]]*\])*)\ *:(.*)$ ]]; then
    echo "bundler.txt:$lineno: cannot parse: $line" >&2
    exit 1
  fi
  name=${BASH_REMATCH[1]}
  flagtext=${BASH_REMATCH[2]}
  argtext=${BASH_REMATCH[4]}
  if [[ -n ${seen[$name]:-} ]]; then
    echo "bundler.txt:$lineno: duplicate case name $name" >&2
    exit 1
  fi
  seen[$name]=1

  compressed=0 llvm_crashes=0 stdin=/dev/null envs=()
  while [[ $flagtext =~ \[([^]]*)\] ]]; do
    flag=${BASH_REMATCH[1]}
    flagtext=${flagtext#*"[$flag]"}
    case $flag in
      compressed) compressed=1 ;;
      llvm-crashes|llvm-wrong|llvm-rejects|llvm-crashes-ours-as:*) llvm_crashes=1 ;;
      unsupported) ;;
      env:*=*) envs+=("${flag#env:}") ;;
      stdin:*) stdin=${flag#stdin:}; stdin=${stdin//\{S\}/$S} ;;
      *) echo "bundler.txt:$lineno: unknown flag [$flag]" >&2; exit 1 ;;
    esac
  done

  dir="$here/$name"
  mkdir -p "$dir"
  count=$((count + 1))
  if ((${#expects[@]})); then
    printf '%s\n' "${expects[@]}" > "$dir/expected-stderr-contains"
  fi
  if ((llvm_crashes)); then
    if ((${#expects[@]} == 0)) && [[ $line != *ours-as:* ]]; then
      echo "bundler.txt:$lineno: [llvm-crashes] case $name needs a # expect: text" >&2
      exit 1
    fi
    crashes=$((crashes + 1))
    continue
  fi

  work="$scratch/$name"
  O="$work/o"
  mkdir -p "$O"
  read -ra words <<< "$argtext"
  args=()
  for w in "${words[@]}"; do
    w=${w//\{S\}/$S}
    w=${w//\{O\}/$O}
    args+=("$w")
  done

  set +e
  (
    cd "$O"
    env -u OFFLOAD_BUNDLER_COMPRESS -u OFFLOAD_BUNDLER_VERBOSE \
      -u OFFLOAD_BUNDLER_COMPRESSION_LEVEL -u OFFLOAD_BUNDLER_IGNORE_ENV_VAR \
      -u COMPRESSED_BUNDLE_FORMAT_VERSION "${envs[@]}" \
      timeout "$TIMEOUT" "$bundler_path" "${args[@]}" < "$stdin" > "$work/stdout" 2> "$work/stderr"
  )
  code=$?
  set -e
  if ((code >= 124)); then
    echo "golden/make.sh: $name: LLVM exited with $code (crash or timeout); mark it [llvm-crashes]" >&2
    problems=$((problems + 1))
  fi

  printf '%s\n' "$code" > "$dir/exit"
  cp "$work/stdout" "$dir/stdout"
  # The command-line parser's messages start with the program's file name, the others
  # with argv[0] as given.
  S="$S" O="$O" P="$bundler_path" B="${bundler_path##*/}" perl -pe '
    s/\Q$ENV{O}\E/{O}/g;
    s/\Q$ENV{S}\E/{S}/g;
    s/clang-offload-bundler-[0-9a-f]{6}\.tmp/clang-offload-bundler-XXXXXX.tmp/g;
    s/\Q$ENV{P}\E/PROG/g;
    s/^\Q$ENV{B}\E: /PROG: /;
  ' "$work/stderr" > "$dir/stderr"
  if ((!compressed)) && [[ -n $(ls -A "$O") ]]; then
    cp -R "$O" "$dir/out"
    # Names cargo cannot package (the `:` of a target ID) are stored escaped as `%XX`, and `%`
    # itself as `%25`; the tests map them back (tests/util/cases.rs, golden_logical_name).
    find "$dir/out" -type f | perl -ne '
      chomp; my ($d, $b) = m{(.*/)([^/]+)$};
      (my $n = $b) =~ s/([%:<>"|?*\\\x00-\x1f\x7f])/sprintf("%%%02X", ord $1)/ge;
      rename("$d$b", "$d$n") or die "$d$b: $!\n" if $n ne $b;
    '
  fi
done < "$cases"

echo "golden: $count cases ($crashes not run: [llvm-crashes]), $(du -sh "$here" | cut -f1)"
if ((problems)); then
  echo "golden: $problems cases crashed or hung LLVM" >&2
  exit 1
fi
