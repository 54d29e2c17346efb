"""One screen per task (Ratios, Timeline, IR Diff, Report), each a Textual MODE of the app."""
