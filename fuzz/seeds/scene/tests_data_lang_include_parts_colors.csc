let red_albedo = [0.8, 0.1, 0.1]
