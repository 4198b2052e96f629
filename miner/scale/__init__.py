"""Mining at dataset scale: a resumable run over many repositories (ledger, staging, executors),
dedupe, export and the HTML report."""
