"""The Result type, streamed run directories, drawing topology, ParaView export and plots."""
