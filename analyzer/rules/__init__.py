"""The compatibility rules, one module per seed: group windows (000), window TVFs (001), window Top-N
(002), and what every kind shares."""
