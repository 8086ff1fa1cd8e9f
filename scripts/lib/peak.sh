# Sourced by the scripts whose figures are compute-bound (bench-kernels, bench-engine): on a shared VM the int8 peak
# of 2 threads can halve for minutes, so they take it around each run.
# int8_peak: the int8 dot-product peak of 2 threads right now, GOP/s (`tern bench compute`, about 0.25 s).
int8_peak() {
  build/tern bench compute -t 2 --json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["int8_gops_median"])'
}
