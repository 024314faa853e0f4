"""The site's and the server's rules, asked the same by every caller: which nodes a queue,
VO or group may use (`access`), total and run limits (`limits`, `serverlimits`), external
load throttles (`throttle`) and the walltime a job is believed to need (`walltimes`)."""
