// driftwatch
